"""A tiny inventory system: items, warehouses, prices and reports."""

from inventory.models import Item, Warehouse
from inventory.pricing import apply_discount, total_value

__all__ = ["Item", "Warehouse", "apply_discount", "total_value"]
