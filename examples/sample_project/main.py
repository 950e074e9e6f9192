"""Fill a warehouse, ship some goods and print the report."""

from inventory.models import Item, Warehouse
from inventory.report import low_stock, stock_report
from inventory.stock import receive, ship


def main() -> None:
    depot = Warehouse("Depot")
    receive(depot, Item("A-100", "Bolt", 0.25), 400)
    receive(depot, Item("B-200", "Bracket", 3.10), 12)
    ship(depot, "B-200", 9)
    print(stock_report(depot))
    print("Low stock:", ", ".join(low_stock(depot)))


if __name__ == "__main__":
    main()
