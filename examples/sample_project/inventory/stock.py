"""Stock movements: receiving and shipping goods."""

from __future__ import annotations

from dataclasses import replace

from inventory.models import Item, Warehouse


class OutOfStock(Exception):
    """Raised when a shipment asks for more than the warehouse holds."""


def receive(warehouse: Warehouse, item: Item, quantity: int) -> Item:
    """Add `quantity` units of `item` to the warehouse and return the stored item."""
    current = warehouse.get(item.sku)
    stored = replace(item, quantity=(current.quantity if current else 0) + quantity)
    warehouse.add(stored)
    return stored


def ship(warehouse: Warehouse, sku: str, quantity: int) -> Item:
    """Take `quantity` units of `sku` out of the warehouse."""
    current = warehouse.get(sku)
    if current is None or current.quantity < quantity:
        raise OutOfStock(f"cannot ship {quantity} of {sku}")
    shipped = replace(current, quantity=current.quantity - quantity)
    warehouse.add(shipped)
    return shipped
