"""Test-Store: a deterministic inventory / CRM / ticketing MCP server used by the e2e tests.

Run with `python store_server.py` (stdio). Built on the official MCP Python SDK (`MCPServer`, the
mcp 2.x name of FastMCP). Everything is in memory and deterministic: the same process always answers
the same read calls the same way; mutating tools change only this process's state.

Special tools for the tests:
- `get-Inventory`, `GetShippingQuote`, `track-shipment`: names with hyphens / upper case.
- `get_stock_summary`: typed return, so the result carries `structuredContent` (and an outputSchema).
- `get_product_card`: three content blocks (two text blocks and a PNG image).
- `fail_with`, `refund_order` (for undelivered orders): results with `isError: true`.
- `slow(seconds)`, `echo(value)`, `crash()` (kills this process mid-call), `count_calls()`, `get_pid()`.

The data tables are importable (`import store_server`) so tests can compute expected answers.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import inspect
import os
import sys
import threading
from collections import Counter
from typing import Any

from pydantic import BaseModel

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ImageContent, TextContent

# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------

# (id, name, category, price, warehouse, stock, supplier)
_PRODUCT_ROWS = [
    ("P001", "Mechanical Keyboard", "accessories", 89.99, "WH-EAST", 120, "S01"),
    ("P002", "Wireless Mouse", "accessories", 29.50, "WH-EAST", 340, "S01"),
    ("P003", "27in 4K Monitor", "hardware", 379.00, "WH-WEST", 45, "S02"),
    ("P004", "USB-C Docking Station", "hardware", 159.00, "WH-WEST", 0, "S02"),
    ("P005", "Laptop Stand", "accessories", 39.90, "WH-EAST", 210, "S03"),
    ("P006", "Noise Cancelling Headset", "audio", 199.00, "WH-CENTRAL", 64, "S04"),
    ("P007", "Conference Speakerphone", "audio", 249.00, "WH-CENTRAL", 8, "S04"),
    ("P008", "Standing Desk", "furniture", 549.00, "WH-CENTRAL", 12, "S05"),
    ("P009", "Ergonomic Chair", "furniture", 429.00, "WH-CENTRAL", 5, "S05"),
    ("P010", "Webcam 1080p", "hardware", 69.00, "WH-EAST", 150, "S02"),
    ("P011", "Office Suite License", "software", 99.00, "WH-DIGITAL", 9999, "S03"),
    ("P012", "Antivirus 1-Year", "software", 49.00, "WH-DIGITAL", 9999, "S03"),
    ("P013", "Password Manager Team", "software", 36.00, "WH-DIGITAL", 9999, "S03"),
    ("P014", "HDMI Cable 2m", "accessories", 9.99, "WH-EAST", 800, "S01"),
    ("P015", "Ethernet Switch 8-port", "networking", 79.00, "WH-WEST", 33, "S02"),
    ("P016", "Wi-Fi 6 Router", "networking", 189.00, "WH-WEST", 0, "S02"),
    ("P017", "Rack Mount Kit", "networking", 59.00, "WH-WEST", 17, "S02"),
    ("P018", "External SSD 1TB", "storage", 119.00, "WH-EAST", 95, "S01"),
    ("P019", "NAS 4-bay", "storage", 499.00, "WH-WEST", 7, "S02"),
    ("P020", "USB Flash Drive 64GB", "storage", 12.50, "WH-EAST", 600, "S01"),
    ("P021", "Desk Lamp LED", "furniture", 45.00, "WH-CENTRAL", 73, "S05"),
    ("P022", "Monitor Arm Dual", "furniture", 129.00, "WH-CENTRAL", 0, "S05"),
    ("P023", "Bluetooth Speaker", "audio", 59.00, "WH-CENTRAL", 140, "S04"),
    ("P024", "Studio Microphone", "audio", 149.00, "WH-CENTRAL", 22, "S04"),
    ("P025", "Graphics Tablet", "hardware", 229.00, "WH-WEST", 14, "S02"),
    ("P026", "Label Printer", "hardware", 99.00, "WH-EAST", 3, "S01"),
    ("P027", "Backup Software Pro", "software", 79.00, "WH-DIGITAL", 9999, "S03"),
    ("P028", "Cable Management Tray", "accessories", 24.00, "WH-EAST", 260, "S05"),
    ("P029", "UPS 1500VA", "hardware", 219.00, "WH-WEST", 11, "S02"),
    ("P030", "Privacy Screen 24in", "accessories", 54.00, "WH-EAST", 0, "S03"),
]

PRODUCTS: dict[str, dict[str, Any]] = {
    r[0]: {
        "id": r[0],
        "sku": f"SKU-{r[0][1:]}",
        "name": r[1],
        "category": r[2],
        "price": r[3],
        "warehouse": r[4],
        "stock": r[5],
        "supplier_id": r[6],
    }
    for r in _PRODUCT_ROWS
}

WAREHOUSES = {
    "WH-EAST": {"id": "WH-EAST", "city": "Boston", "country": "US", "capacity": 5000},
    "WH-WEST": {"id": "WH-WEST", "city": "Portland", "country": "US", "capacity": 3000},
    "WH-CENTRAL": {"id": "WH-CENTRAL", "city": "Chicago", "country": "US", "capacity": 4000},
    "WH-DIGITAL": {"id": "WH-DIGITAL", "city": "(virtual)", "country": "US", "capacity": 0},
}

SUPPLIERS = {
    "S01": {"id": "S01", "name": "Peripheral Partners", "country": "TW", "lead_time_days": 14},
    "S02": {"id": "S02", "name": "Northwind Hardware", "country": "US", "lead_time_days": 7},
    "S03": {"id": "S03", "name": "Softline Distribution", "country": "DE", "lead_time_days": 1},
    "S04": {"id": "S04", "name": "AudioWorks", "country": "JP", "lead_time_days": 21},
    "S05": {"id": "S05", "name": "Office Comfort Ltd", "country": "PL", "lead_time_days": 30},
}

# (id, name, email, tier, country)
_CUSTOMER_ROWS = [
    ("C001", "Acme Corp", "buyer@acme.example", "gold", "US"),
    ("C002", "Globex", "procurement@globex.example", "silver", "US"),
    ("C003", "Initech", "it@initech.example", "bronze", "US"),
    ("C004", "Umbrella GmbH", "einkauf@umbrella.example", "gold", "DE"),
    ("C005", "Stark Industries", "orders@stark.example", "platinum", "US"),
    ("C006", "Wayne Enterprises", "supply@wayne.example", "platinum", "US"),
    ("C007", "Tyrell SA", "achats@tyrell.example", "silver", "FR"),
    ("C008", "Cyberdyne KK", "kobai@cyberdyne.example", "bronze", "JP"),
    ("C009", "Soylent BV", "inkoop@soylent.example", "silver", "NL"),
    ("C010", "Hooli", "ops@hooli.example", "gold", "US"),
    ("C011", "Vandelay Imports", "art@vandelay.example", "bronze", "US"),
    ("C012", "Oceanic Ltd", "fleet@oceanic.example", "silver", "GB"),
    ("C013", "Massive Dynamic", "lab@massive.example", "gold", "US"),
    ("C014", "Aperture Srl", "test@aperture.example", "bronze", "IT"),
    ("C015", "Black Mesa AB", "facility@blackmesa.example", "silver", "SE"),
    ("C016", "Wonka Sweets", "factory@wonka.example", "gold", "GB"),
    ("C017", "Duff Brewing", "taps@duff.example", "bronze", "US"),
    ("C018", "Gringotts SpA", "vault@gringotts.example", "platinum", "IT"),
    ("C019", "Prestige Worldwide", "boats@prestige.example", "bronze", "US"),
    ("C020", "Monsters Inc", "scare@monsters.example", "silver", "CA"),
]

CUSTOMERS: dict[str, dict[str, Any]] = {
    r[0]: {"id": r[0], "name": r[1], "email": r[2], "tier": r[3], "country": r[4]} for r in _CUSTOMER_ROWS
}

_STATUSES = ["pending", "shipped", "delivered", "delivered", "cancelled"]


def _make_orders() -> dict[str, dict[str, Any]]:
    orders: dict[str, dict[str, Any]] = {}
    pids = list(PRODUCTS)
    cids = list(CUSTOMERS)
    for i in range(60):
        oid = f"O{1001 + i}"
        cust = cids[(i * 7) % len(cids)]
        items = []
        for k in range(1 + i % 3):
            pid = pids[(i * 5 + k * 11) % len(pids)]
            qty = 1 + (i + k) % 4
            items.append({"product_id": pid, "quantity": qty, "unit_price": PRODUCTS[pid]["price"]})
        total = round(sum(it["quantity"] * it["unit_price"] for it in items), 2)
        orders[oid] = {
            "id": oid,
            "customer_id": cust,
            "items": items,
            "total": total,
            "status": _STATUSES[i % len(_STATUSES)],
            "date": f"2024-{1 + i % 12:02d}-{1 + (i * 3) % 28:02d}",
        }
    return orders


ORDERS = _make_orders()

AGENTS = ["alice", "bob", "carol", "dave"]

_TICKET_ROWS = [
    ("T-001", "C001", "Keyboard keys sticking", "low", "open", "alice"),
    ("T-002", "C005", "Docking station not detected", "high", "open", "bob"),
    ("T-003", "C004", "Invoice VAT number wrong", "medium", "pending", "carol"),
    ("T-004", "C010", "Monitor arrived with dead pixels", "high", "open", None),
    ("T-005", "C006", "Request bulk discount", "low", "closed", "dave"),
    ("T-006", "C013", "License key not working", "urgent", "open", "alice"),
    ("T-007", "C002", "Late delivery", "medium", "open", None),
    ("T-008", "C018", "Chair missing screws", "low", "pending", "bob"),
    ("T-009", "C007", "Router firmware update fails", "high", "closed", "carol"),
    ("T-010", "C016", "Wrong colour headset", "medium", "open", "dave"),
    ("T-011", "C012", "Speakerphone echo", "medium", "open", None),
    ("T-012", "C009", "Cancel order O1005", "low", "closed", "alice"),
    ("T-013", "C005", "NAS drive bay broken", "urgent", "open", "bob"),
    ("T-014", "C020", "Password manager seats", "low", "pending", None),
    ("T-015", "C003", "Account access", "medium", "open", "carol"),
]

TICKETS: dict[str, dict[str, Any]] = {
    r[0]: {
        "id": r[0],
        "customer_id": r[1],
        "subject": r[2],
        "priority": r[3],
        "status": r[4],
        "assignee": r[5],
        "comments": [],
    }
    for r in _TICKET_ROWS
}

DISCOUNTS = {
    "WELCOME10": {"code": "WELCOME10", "percent": 10, "min_total": 0},
    "BULK15": {"code": "BULK15", "percent": 15, "min_total": 1000},
    "VIP20": {"code": "VIP20", "percent": 20, "min_total": 2000},
}

SHIPPING_RATES = {"US": 9.5, "CA": 14.0, "GB": 18.0, "DE": 16.0, "FR": 16.0, "JP": 25.0}

# A 1x1 transparent PNG.
PNG_1X1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)
PNG_1X1_B64 = base64.b64encode(PNG_1X1).decode()

# --------------------------------------------------------------------------------------------
# Server
# --------------------------------------------------------------------------------------------

server = MCPServer(
    "test-store",
    version="1.0.0",
    instructions="Deterministic inventory, CRM and ticketing store used by code-executor's tests.",
)

_calls: Counter[str] = Counter()
_calls_lock = threading.Lock()


def _record(name: str) -> None:
    with _calls_lock:
        _calls[name] += 1


def tool(name: str | None = None, *, structured: bool = False):
    """Register a tool that counts its calls (for `count_calls`)."""

    def deco(fn):
        tool_name = name or fn.__name__
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def wrapper(*args, **kwargs):
                _record(tool_name)
                return await fn(*args, **kwargs)

        else:

            @functools.wraps(fn)
            def wrapper(*args, **kwargs):
                _record(tool_name)
                return fn(*args, **kwargs)

        server.tool(name=tool_name, description=inspect.getdoc(fn), structured_output=structured)(wrapper)
        return fn

    return deco


class StoreError(Exception):
    pass


def _j(value: Any) -> str:
    import json

    return json.dumps(value, sort_keys=True)


def _err(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


def _product(product_id: str) -> dict[str, Any]:
    p = PRODUCTS.get(product_id)
    if p is None:
        raise ToolError(f"unknown product {product_id}")
    return p


# ---- catalogue ------------------------------------------------------------------------------


@tool()
def list_products(category: str | None = None, in_stock_only: bool = False, limit: int = 100) -> str:
    """List products in the catalogue, optionally filtered by category and stock. Returns a JSON array."""
    out = [
        p
        for p in PRODUCTS.values()
        if (category is None or p["category"] == category) and (not in_stock_only or p["stock"] > 0)
    ]
    return _j(out[:limit])


@tool()
def get_product(product_id: str) -> str:
    """Get one product by id (e.g. P001): name, category, price, stock, warehouse, supplier."""
    return _j(_product(product_id))


@tool()
def search_products(query: str) -> str:
    """Full-text search of product names and categories. Returns matching products as a JSON array."""
    q = query.lower()
    return _j([p for p in PRODUCTS.values() if q in p["name"].lower() or q in p["category"]])


@tool()
def list_categories() -> str:
    """List the product categories with the number of products in each."""
    counts = Counter(p["category"] for p in PRODUCTS.values())
    return _j(dict(sorted(counts.items())))


@tool("get-Inventory")
def get_inventory(warehouse: str | None = None, sku: str | None = None) -> str:
    """Get current inventory (stock on hand) per SKU, optionally for one warehouse or one SKU."""
    rows = [
        {"sku": p["sku"], "product_id": p["id"], "warehouse": p["warehouse"], "on_hand": p["stock"]}
        for p in PRODUCTS.values()
        if (warehouse is None or p["warehouse"] == warehouse) and (sku is None or p["sku"] == sku)
    ]
    return _j({"warehouse": warehouse, "count": len(rows), "items": rows})


@tool()
def update_stock(product_id: str, delta: int) -> str:
    """Adjust a product's stock level by delta (negative to remove). Returns the new level."""
    p = _product(product_id)
    if p["stock"] + delta < 0:
        raise ToolError(f"stock of {product_id} cannot go below zero")
    p["stock"] += delta
    return _j({"product_id": product_id, "stock": p["stock"]})


@tool()
def get_price_history(product_id: str) -> str:
    """Monthly price history of a product for the last 6 months."""
    p = _product(product_id)
    base = p["price"]
    return _j([{"month": f"2024-{m:02d}", "price": round(base * (1 + (m - 6) * 0.01), 2)} for m in range(1, 7)])


@tool()
def get_low_stock_report(threshold: int = 10) -> str:
    """Products whose stock is at or below the threshold (reorder candidates)."""
    return _j(
        [
            {"product_id": p["id"], "name": p["name"], "stock": p["stock"]}
            for p in PRODUCTS.values()
            if p["stock"] <= threshold
        ]
    )


class CategoryStock(BaseModel):
    category: str
    products: int
    units: int


class StockSummary(BaseModel):
    total_products: int
    total_units: int
    out_of_stock: list[str]
    by_category: list[CategoryStock]


def stock_summary() -> StockSummary:
    physical = [p for p in PRODUCTS.values() if p["warehouse"] != "WH-DIGITAL"]
    cats = sorted({p["category"] for p in physical})
    return StockSummary(
        total_products=len(physical),
        total_units=sum(p["stock"] for p in physical),
        out_of_stock=sorted(p["id"] for p in physical if p["stock"] == 0),
        by_category=[
            CategoryStock(
                category=c,
                products=sum(1 for p in physical if p["category"] == c),
                units=sum(p["stock"] for p in physical if p["category"] == c),
            )
            for c in cats
        ],
    )


@tool(structured=True)
def get_stock_summary() -> StockSummary:
    """Summary of physical stock: totals, out-of-stock product ids, units per category (structured)."""
    return stock_summary()


@tool()
def get_product_card(product_id: str) -> CallToolResult:
    """A product card for display: a title block, a details block and a thumbnail image."""
    p = _product(product_id)
    return CallToolResult(
        content=[
            TextContent(type="text", text=f"{p['name']} ({p['id']})"),
            TextContent(type="text", text=f"Price: {p['price']:.2f} USD, stock: {p['stock']}"),
            ImageContent(type="image", data=PNG_1X1_B64, mime_type="image/png"),
        ]
    )


# ---- warehouses & suppliers ----------------------------------------------------------------


@tool()
def list_warehouses() -> str:
    """List warehouses with their city, country and capacity."""
    return _j(list(WAREHOUSES.values()))


@tool()
def get_warehouse(warehouse_id: str) -> str:
    """Get one warehouse by id (e.g. WH-EAST) with the number of SKUs it holds."""
    w = WAREHOUSES.get(warehouse_id)
    if w is None:
        raise ToolError(f"unknown warehouse {warehouse_id}")
    return _j({**w, "skus": sum(1 for p in PRODUCTS.values() if p["warehouse"] == warehouse_id)})


@tool()
def transfer_stock(product_id: str, to_warehouse: str) -> str:
    """Move a product's stock to another warehouse."""
    p = _product(product_id)
    if to_warehouse not in WAREHOUSES:
        raise ToolError(f"unknown warehouse {to_warehouse}")
    p["warehouse"] = to_warehouse
    return _j({"product_id": product_id, "warehouse": to_warehouse})


@tool()
def list_suppliers() -> str:
    """List suppliers with their country and lead time in days."""
    return _j(list(SUPPLIERS.values()))


@tool()
def get_supplier(supplier_id: str) -> str:
    """Get one supplier by id (e.g. S01) and the products it supplies."""
    s = SUPPLIERS.get(supplier_id)
    if s is None:
        raise ToolError(f"unknown supplier {supplier_id}")
    return _j({**s, "products": [p["id"] for p in PRODUCTS.values() if p["supplier_id"] == supplier_id]})


_purchase_orders: list[dict[str, Any]] = []


@tool()
def create_purchase_order(supplier_id: str, product_id: str, quantity: int) -> str:
    """Create a purchase order to restock a product from a supplier."""
    if supplier_id not in SUPPLIERS:
        raise ToolError(f"unknown supplier {supplier_id}")
    _product(product_id)
    po = {
        "id": f"PO-{len(_purchase_orders) + 1:04d}",
        "supplier_id": supplier_id,
        "product_id": product_id,
        "quantity": quantity,
        "eta_days": SUPPLIERS[supplier_id]["lead_time_days"],
    }
    _purchase_orders.append(po)
    return _j(po)


# ---- customers -----------------------------------------------------------------------------


@tool()
def list_customers(tier: str | None = None, country: str | None = None) -> str:
    """List CRM customers, optionally filtered by tier (bronze/silver/gold/platinum) and country code."""
    return _j(
        [
            c
            for c in CUSTOMERS.values()
            if (tier is None or c["tier"] == tier) and (country is None or c["country"] == country)
        ]
    )


@tool()
def get_customer(customer_id: str) -> str:
    """Get one customer (account) by id, e.g. C001."""
    c = CUSTOMERS.get(customer_id)
    if c is None:
        raise ToolError(f"unknown customer {customer_id}")
    return _j(c)


@tool()
def search_customers(query: str) -> str:
    """Search customers by name or email substring."""
    q = query.lower()
    return _j([c for c in CUSTOMERS.values() if q in c["name"].lower() or q in c["email"]])


@tool()
def create_customer(name: str, email: str, country: str, tier: str = "bronze") -> str:
    """Create a new customer account in the CRM."""
    cid = f"C{len(CUSTOMERS) + 1:03d}"
    CUSTOMERS[cid] = {"id": cid, "name": name, "email": email, "tier": tier, "country": country}
    return _j(CUSTOMERS[cid])


@tool()
def update_customer_tier(customer_id: str, tier: str) -> str:
    """Change a customer's loyalty tier."""
    c = CUSTOMERS.get(customer_id)
    if c is None:
        raise ToolError(f"unknown customer {customer_id}")
    c["tier"] = tier
    return _j(c)


@tool()
def delete_customer(customer_id: str) -> str:
    """Permanently delete a customer account and its history (destructive)."""
    c = CUSTOMERS.pop(customer_id, None)
    if c is None:
        raise ToolError(f"unknown customer {customer_id}")
    return _j({"deleted": customer_id})


@tool()
def get_customer_lifetime_value(customer_id: str) -> str:
    """Total spent by a customer over all non-cancelled orders."""
    if customer_id not in CUSTOMERS:
        raise ToolError(f"unknown customer {customer_id}")
    orders = [o for o in ORDERS.values() if o["customer_id"] == customer_id and o["status"] != "cancelled"]
    return _j(
        {
            "customer_id": customer_id,
            "orders": len(orders),
            "lifetime_value": round(sum(o["total"] for o in orders), 2),
        }
    )


# ---- orders --------------------------------------------------------------------------------


@tool()
def list_orders(status: str | None = None, customer_id: str | None = None) -> str:
    """List orders, optionally filtered by status (pending/shipped/delivered/cancelled) or customer."""
    return _j(
        [
            o
            for o in ORDERS.values()
            if (status is None or o["status"] == status) and (customer_id is None or o["customer_id"] == customer_id)
        ]
    )


@tool()
def get_order(order_id: str) -> str:
    """Get one order by id, e.g. O1001, with its items and total."""
    o = ORDERS.get(order_id)
    if o is None:
        raise ToolError(f"unknown order {order_id}")
    return _j(o)


@tool()
def search_orders(
    customer_id: str | None = None,
    status: str | None = None,
    min_total: float | None = None,
    max_total: float | None = None,
    product_id: str | None = None,
) -> str:
    """Search sales orders by customer, status, total range or contained product."""
    return _j(
        [
            o
            for o in ORDERS.values()
            if (customer_id is None or o["customer_id"] == customer_id)
            and (status is None or o["status"] == status)
            and (min_total is None or o["total"] >= min_total)
            and (max_total is None or o["total"] <= max_total)
            and (product_id is None or any(it["product_id"] == product_id for it in o["items"]))
        ]
    )


@tool()
def create_order(customer_id: str, items: list[dict[str, Any]]) -> str:
    """Create a sales order: items is a list of {product_id, quantity}."""
    if customer_id not in CUSTOMERS:
        raise ToolError(f"unknown customer {customer_id}")
    lines = []
    for it in items:
        p = _product(it["product_id"])
        lines.append({"product_id": p["id"], "quantity": int(it["quantity"]), "unit_price": p["price"]})
    oid = f"O{1001 + len(ORDERS)}"
    ORDERS[oid] = {
        "id": oid,
        "customer_id": customer_id,
        "items": lines,
        "total": round(sum(x["quantity"] * x["unit_price"] for x in lines), 2),
        "status": "pending",
        "date": "2024-12-31",
    }
    return _j(ORDERS[oid])


@tool()
def cancel_order(order_id: str) -> str:
    """Cancel a pending order."""
    o = ORDERS.get(order_id)
    if o is None:
        raise ToolError(f"unknown order {order_id}")
    if o["status"] != "pending":
        raise ToolError(f"order {order_id} is {o['status']}, only pending orders can be cancelled")
    o["status"] = "cancelled"
    return _j(o)


@tool()
def refund_order(order_id: str) -> CallToolResult:
    """Refund a delivered order. Fails (isError) for orders that were not delivered."""
    o = ORDERS.get(order_id)
    if o is None:
        return _err(f"unknown order {order_id}")
    if o["status"] != "delivered":
        return _err(f"refund refused: order {order_id} is {o['status']}, not delivered")
    return CallToolResult(content=[TextContent(type="text", text=_j({"refunded": order_id, "amount": o["total"]}))])


@tool()
def get_order_invoice(order_id: str) -> str:
    """Render the invoice of an order as plain text."""
    o = ORDERS.get(order_id)
    if o is None:
        raise ToolError(f"unknown order {order_id}")
    lines = [f"INVOICE {o['id']} for {CUSTOMERS[o['customer_id']]['name']}"]
    for it in o["items"]:
        lines.append(f"{it['quantity']} x {PRODUCTS[it['product_id']]['name']} @ {it['unit_price']:.2f}")
    lines.append(f"TOTAL {o['total']:.2f}")
    return "\n".join(lines)


@tool("track-shipment")
def track_shipment(order_id: str) -> str:
    """Track the shipment of an order: carrier, tracking number and status."""
    o = ORDERS.get(order_id)
    if o is None:
        raise ToolError(f"unknown order {order_id}")
    return _j({"order_id": order_id, "carrier": "UPS", "tracking": f"1Z{order_id[1:]}999", "status": o["status"]})


@tool("GetShippingQuote")
def get_shipping_quote(product_id: str, quantity: int, country: str) -> str:
    """Quote the shipping cost of quantity units of a product to a country."""
    _product(product_id)
    rate = SHIPPING_RATES.get(country)
    if rate is None:
        raise ToolError(f"no shipping to {country}")
    return _j({"product_id": product_id, "country": country, "cost": round(rate + 1.5 * quantity, 2)})


@tool()
def list_discounts() -> str:
    """List the active discount codes and their minimum order totals."""
    return _j(list(DISCOUNTS.values()))


@tool()
def apply_discount(order_id: str, code: str) -> str:
    """Apply a discount code to an order and return the discounted total."""
    o = ORDERS.get(order_id)
    d = DISCOUNTS.get(code)
    if o is None or d is None:
        raise ToolError("unknown order or discount code")
    if o["total"] < d["min_total"]:
        raise ToolError(f"order total below the minimum for {code}")
    return _j({"order_id": order_id, "code": code, "total": round(o["total"] * (100 - d["percent"]) / 100, 2)})


@tool()
def get_sales_report(month: str) -> str:
    """Sales report for a month (YYYY-MM): number of orders and revenue, excluding cancelled orders."""
    orders = [o for o in ORDERS.values() if o["date"].startswith(month) and o["status"] != "cancelled"]
    return _j({"month": month, "orders": len(orders), "revenue": round(sum(o["total"] for o in orders), 2)})


# ---- ticketing -----------------------------------------------------------------------------


@tool()
def list_tickets(status: str | None = None, priority: str | None = None) -> str:
    """List support tickets, optionally filtered by status (open/pending/closed) and priority."""
    return _j(
        [
            t
            for t in TICKETS.values()
            if (status is None or t["status"] == status) and (priority is None or t["priority"] == priority)
        ]
    )


@tool()
def get_ticket(ticket_id: str) -> str:
    """Get one support ticket by id, e.g. T-001, with its comments."""
    t = TICKETS.get(ticket_id)
    if t is None:
        raise ToolError(f"unknown ticket {ticket_id}")
    return _j(t)


@tool()
def create_ticket(customer_id: str, subject: str, priority: str = "medium") -> str:
    """Open a new support ticket for a customer."""
    if customer_id not in CUSTOMERS:
        raise ToolError(f"unknown customer {customer_id}")
    tid = f"T-{len(TICKETS) + 1:03d}"
    TICKETS[tid] = {
        "id": tid,
        "customer_id": customer_id,
        "subject": subject,
        "priority": priority,
        "status": "open",
        "assignee": None,
        "comments": [],
    }
    return _j(TICKETS[tid])


@tool()
def update_ticket_status(ticket_id: str, status: str) -> str:
    """Set a ticket's status (open, pending, closed)."""
    t = TICKETS.get(ticket_id)
    if t is None:
        raise ToolError(f"unknown ticket {ticket_id}")
    t["status"] = status
    return _j(t)


@tool()
def add_ticket_comment(ticket_id: str, comment: str) -> str:
    """Add a comment to a support ticket."""
    t = TICKETS.get(ticket_id)
    if t is None:
        raise ToolError(f"unknown ticket {ticket_id}")
    t["comments"].append(comment)
    return _j(t)


@tool()
def assign_ticket(ticket_id: str, agent: str) -> str:
    """Assign a support ticket to an agent."""
    t = TICKETS.get(ticket_id)
    if t is None or agent not in AGENTS:
        raise ToolError("unknown ticket or agent")
    t["assignee"] = agent
    return _j(t)


@tool()
def get_ticket_thread(ticket_id: str) -> CallToolResult:
    """A ticket as two text blocks: a JSON header and the plain-text conversation transcript."""
    t = TICKETS.get(ticket_id)
    if t is None:
        return _err(f"unknown ticket {ticket_id}")
    header = {"id": t["id"], "subject": t["subject"], "status": t["status"]}
    transcript = f"Customer {t['customer_id']} wrote: {t['subject']}"
    return CallToolResult(
        content=[TextContent(type="text", text=_j(header)), TextContent(type="text", text=transcript)]
    )


@tool()
def list_agents() -> str:
    """List support agents and how many open tickets each has."""
    return _j(
        [
            {"agent": a, "open": sum(1 for t in TICKETS.values() if t["assignee"] == a and t["status"] == "open")}
            for a in AGENTS
        ]
    )


# ---- test helpers --------------------------------------------------------------------------


@tool()
def echo(value: Any) -> str:
    """Echo the value back as JSON (test helper)."""
    return _j({"echo": value})


@tool()
async def slow(seconds: float) -> str:
    """Sleep for the given number of seconds, then answer (test helper)."""
    await asyncio.sleep(seconds)
    return _j({"slept": seconds})


@tool()
def fail_with(message: str) -> CallToolResult:
    """Always fail: returns a result with isError true carrying the message (test helper)."""
    return _err(message)


@tool()
def crash() -> str:
    """Kill this server process in the middle of the call (test helper)."""
    sys.stdout.flush()
    os._exit(1)


@tool()
def count_calls() -> str:
    """How many tool calls this process has served, in total and per tool (count_calls itself excluded)."""
    with _calls_lock:
        by_tool = {k: v for k, v in _calls.items() if k != "count_calls"}
    return _j({"total": sum(by_tool.values()), "byTool": by_tool, "pid": os.getpid()})


@tool()
def env_has(name: str) -> str:
    """Whether this server process has the named environment variable (test helper)."""
    return _j({"name": name, "present": name in os.environ})


@tool()
def get_pid() -> str:
    """The process id of this server process (test helper)."""
    return _j({"pid": os.getpid()})


if __name__ == "__main__":
    server.run()
