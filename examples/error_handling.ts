// Error handling: refund every order of two customers who complained, keep going when a refund is refused, and
// report what happened. A downstream error (a result with isError) becomes an exception with the
// server's message; so does a call the LLM did not allow; neither stops the rest of the work.
//
// allowedTools: ["mcp__Test-Store__list_orders", "mcp__Test-Store__refund_order"]

const CUSTOMERS = ["C002", "C003"];
type Order = { id: string; status: string; total: number };

const orders = (
  await Promise.all(CUSTOMERS.map((c) => callMCPTool("Test-Store", "list_orders", { customer_id: c }) as Promise<Order[]>))
).flat();

const refunded: { order: string; amount: number }[] = [];
const refused: { order: string; reason: string }[] = [];
for (const order of orders) {
  try {
    const r = await callMCPTool("Test-Store", "refund_order", { order_id: order.id });
    refunded.push({ order: r.refunded, amount: r.amount });
  } catch (e) {
    refused.push({ order: order.id, reason: (e as Error).message });
  }
}

// Calls outside allowedTools are refused inside the sandbox, before reaching any server.
let guard = "";
try {
  await callMCPTool("Test-Store", "delete_customer", { customer_id: CUSTOMERS[0] });
} catch (e) {
  guard = (e as Error).message;
}

// A slow tool can be bounded from the code too.
const withDeadline = <T>(p: Promise<T>, ms: number) =>
  Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no answer in ${ms} ms`)), ms))]);
let deadline = "";
try {
  await withDeadline(callMCPTool("Test-Store", "list_orders", { customer_id: CUSTOMERS[0] }), 10_000);
  deadline = "answered in time";
} catch (e) {
  deadline = (e as Error).message;
}

console.log(`${refunded.length} refunded, ${refused.length} refused for ${CUSTOMERS.join(", ")}`);
for (const r of refused) console.log(`  ${r.order}: ${r.reason}`);
return { refunded: refunded.map((r) => r.order), refused, guard, deadline };
