// Multi-server data filtering: which products must be reordered today, and by when do they
// arrive? The low-stock report, every product and every supplier come from the store server,
// today's date from the time server; only the short plan below reaches the LLM.
//
// allowedTools: ["mcp__Test-Store__get_low_stock_report", "mcp__Test-Store__get_product", "mcp__Test-Store__get_supplier", "mcp__time__get_current_time"]

type LowStock = { product_id: string; name: string; stock: number };
type Product = { id: string; name: string; price: number; supplier_id: string; warehouse: string };
type Supplier = { id: string; name: string; lead_time_days: number };

const THRESHOLD = 10;
const [low, now] = await Promise.all([
  callMCPTool("Test-Store", "get_low_stock_report", { threshold: THRESHOLD }) as Promise<LowStock[]>,
  callMCPTool("mcp__time__get_current_time", { timezone: "UTC" }),
]);
const today = new Date(now.datetime);

// Digital goods never run out: keep physical products only.
const products: Product[] = await Promise.all(
  low.map((p) => callMCPTool("Test-Store", "get_product", { product_id: p.product_id })),
);
const physical = products.filter((p) => p.warehouse !== "WH-DIGITAL");

// One look-up per supplier, however many products it supplies.
const supplierIds = [...new Set(physical.map((p) => p.supplier_id))];
const suppliers = new Map<string, Supplier>(
  await Promise.all(
    supplierIds.map(async (id) => [id, await callMCPTool("Test-Store", "get_supplier", { supplier_id: id })] as const),
  ),
);

const plan = physical
  .map((p) => {
    const supplier = suppliers.get(p.supplier_id)!;
    const arrives = new Date(today.getTime() + supplier.lead_time_days * 86_400_000);
    const stock = low.find((l) => l.product_id === p.id)!.stock;
    return { product: p.id, name: p.name, stock, supplier: supplier.name, arrives: arrives.toISOString().slice(0, 10) };
  })
  .sort((a, b) => a.stock - b.stock || a.product.localeCompare(b.product));

console.table(plan);
console.log(`${plan.length} products at or below ${THRESHOLD} units; ${suppliers.size} suppliers to call.`);
return { count: plan.length, products: plan.map((p) => p.product), suppliers: suppliers.size };
