# Python: the lifetime value of every gold customer, fetched concurrently, largest first.
# The customer list and one look-up per customer stay in the sandbox; the LLM gets the ranking.
#
# allowedTools: ["mcp__Test-Store__list_customers", "mcp__Test-Store__get_customer_lifetime_value"]

import asyncio

customers = await call_mcp_tool("Test-Store", "list_customers", {"tier": "gold"})


async def value(customer):
    v = await call_mcp_tool("Test-Store", "get_customer_lifetime_value", {"customer_id": customer["id"]})
    return {"id": customer["id"], "name": customer["name"], "value": v["lifetime_value"]}


ranking = sorted(await asyncio.gather(*(value(c) for c in customers)), key=lambda r: (-r["value"], r["id"]))
for r in ranking:
    print(f"{r['value']:>10.2f}  {r['name']}")
ranking
