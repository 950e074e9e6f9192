"""A plain-text stock report built from the other modules."""

from __future__ import annotations

from inventory.models import Warehouse
from inventory.pricing import total_value, with_vat


def low_stock(warehouse: Warehouse, threshold: int = 5) -> list[str]:
    """SKUs of items with fewer than `threshold` units left."""
    return sorted(sku for sku, item in warehouse.items.items() if item.quantity < threshold)


def stock_report(warehouse: Warehouse) -> str:
    """One line per item, then the totals."""
    lines = [f"Stock report for {warehouse.name}"]
    for item in sorted(warehouse.items.values(), key=lambda item: item.sku):
        lines.append(f"{item.sku:<8} {item.name:<20} {item.quantity:>5} x {item.unit_price:>8.2f}")
    net = total_value(warehouse)
    lines.append(f"Total: {net:.2f} (with VAT {with_vat(net):.2f})")
    return "\n".join(lines)
