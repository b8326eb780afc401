"""Project-scale dbt projects for the local-loop benchmark (issue 71), written for both sides.

Two projects, the same SQL on ours (``deltamerge``) and on dbt-duckdb, differing only in the
incremental strategy's name and in the profile:

- **jaffle**: shaped like dbt-labs' jaffle_shop, as a new user would try it: three seeds
  (customers, orders, payments; generated here, the same sizes), three staging views, two tables,
  one incremental model that finds nothing new on a second build, 20 data tests;
- **generated**: ``models`` models in layers (views over the seeds, tables over views, incremental
  models over tables; each model reads one or two of the previous layer) and ``tests`` data tests
  spread over them (unique, not_null, accepted_values, relationships), like a real project's DAG.
"""

from __future__ import annotations

import random
from datetime import date, timedelta
from pathlib import Path

PROJECT_YML = """name: {name}
version: "1.0"
profile: {name}
config-version: 2
flags:
  send_anonymous_usage_stats: false
models:
  {name}:
    staging:
      +materialized: view
"""
STATUSES = ("placed", "shipped", "completed", "return_pending", "returned")
METHODS = ("credit_card", "coupon", "bank_transfer", "gift_card")


def incremental_config(flavour: str, unique_key: str) -> str:
    """The config line of an incremental model: our strategy, or dbt-duckdb's ``merge``."""
    strategy = "delta_merge" if flavour == "ours" else "merge"
    return (
        f"{{{{ config(materialized='incremental', incremental_strategy='{strategy}', "
        f"unique_key='{unique_key}') }}}}\n"
    )


def _seeds(folder: Path, seed: int = 71) -> None:
    """jaffle_shop's three raw tables at its sizes (100 customers, 99 orders, 113 payments)."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    customers = ["id,first_name,last_name"]
    customers += [f"{i},Name{i},{chr(65 + i % 26)}." for i in range(1, 101)]
    orders = ["id,user_id,order_date,status"]
    start = date(2018, 1, 1)
    for i in range(1, 100):
        day = start + timedelta(days=i // 2)
        orders.append(f"{i},{rng.randint(1, 100)},{day.isoformat()},{rng.choice(STATUSES)}")
    payments = ["id,order_id,payment_method,amount"]
    for i in range(1, 114):
        payments.append(f"{i},{(i - 1) % 99 + 1},{rng.choice(METHODS)},{rng.randint(0, 3000)}")
    for name, rows in (("raw_customers", customers), ("raw_orders", orders), ("raw_payments", payments)):
        (folder / f"{name}.csv").write_text("\n".join(rows) + "\n")


JAFFLE_MODELS = {
    "staging/stg_customers.sql": (
        "select id as customer_id, first_name, last_name from {{ ref('raw_customers') }}\n"
    ),
    "staging/stg_orders.sql": (
        "select id as order_id, user_id as customer_id, order_date, status\n"
        "from {{ ref('raw_orders') }}\n"
    ),
    "staging/stg_payments.sql": (
        "select id as payment_id, order_id, payment_method, amount / 100 as amount\n"
        "from {{ ref('raw_payments') }}\n"
    ),
    "customers.sql": """{{ config(materialized='table') }}
with customers as (select * from {{ ref('stg_customers') }}),
orders as (select * from {{ ref('stg_orders') }}),
payments as (select * from {{ ref('stg_payments') }}),
customer_orders as (
    select customer_id, min(order_date) as first_order, max(order_date) as most_recent_order,
           count(order_id) as number_of_orders
    from orders group by customer_id
),
customer_payments as (
    select orders.customer_id, sum(amount) as total_amount
    from payments left join orders on payments.order_id = orders.order_id
    group by orders.customer_id
)
select customers.customer_id, customers.first_name, customers.last_name,
       customer_orders.first_order, customer_orders.most_recent_order,
       customer_orders.number_of_orders, customer_payments.total_amount as customer_lifetime_value
from customers
left join customer_orders on customers.customer_id = customer_orders.customer_id
left join customer_payments on customers.customer_id = customer_payments.customer_id
""",
    "orders.sql": """{{ config(materialized='table') }}
{% set payment_methods = ['credit_card', 'coupon', 'bank_transfer', 'gift_card'] %}
with orders as (select * from {{ ref('stg_orders') }}),
payments as (select * from {{ ref('stg_payments') }}),
order_payments as (
    select order_id,
        {% for payment_method in payment_methods -%}
        sum(case when payment_method = '{{ payment_method }}' then amount else 0 end)
            as {{ payment_method }}_amount,
        {% endfor -%}
        sum(amount) as total_amount
    from payments group by order_id
)
select orders.order_id, orders.customer_id, orders.order_date, orders.status,
    {% for payment_method in payment_methods -%}
    coalesce(order_payments.{{ payment_method }}_amount, 0) as {{ payment_method }}_amount,
    {% endfor -%}
    coalesce(order_payments.total_amount, 0) as amount
from orders left join order_payments on orders.order_id = order_payments.order_id
""",
    "order_events.sql": """{incremental}select order_id, customer_id, order_date, status
from {{{{ ref('stg_orders') }}}}
{{% if is_incremental() %}}
where order_date > (select max(order_date) from {{{{ this }}}})
{{% endif %}}
""",
}
JAFFLE_SCHEMA = """version: 2
models:
  - name: stg_customers
    columns:
      - name: customer_id
        data_tests: [unique, not_null]
  - name: stg_orders
    columns:
      - name: order_id
        data_tests: [unique, not_null]
      - name: status
        data_tests:
          - accepted_values:
              arguments: {values: [placed, shipped, completed, return_pending, returned]}
  - name: stg_payments
    columns:
      - name: payment_id
        data_tests: [unique, not_null]
      - name: payment_method
        data_tests:
          - accepted_values:
              arguments: {values: [credit_card, coupon, bank_transfer, gift_card]}
  - name: customers
    columns:
      - name: customer_id
        data_tests: [unique, not_null]
  - name: orders
    columns:
      - name: order_id
        data_tests: [unique, not_null]
      - name: customer_id
        data_tests:
          - not_null
          - relationships:
              arguments: {to: ref('customers'), field: customer_id}
      - name: status
        data_tests:
          - accepted_values:
              arguments: {values: [placed, shipped, completed, return_pending, returned]}
      - name: amount
        data_tests: [not_null]
      - name: credit_card_amount
        data_tests: [not_null]
      - name: coupon_amount
        data_tests: [not_null]
  - name: order_events
    columns:
      - name: order_id
        data_tests: [unique, not_null]
"""


def write_common(root: Path, name: str, profile: str) -> None:
    """dbt_project.yml and profiles.yml of a project."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "dbt_project.yml").write_text(PROJECT_YML.format(name=name))
    (root / "profiles.yml").write_text(profile)


def jaffle(root: Path, flavour: str, profile: str) -> Path:
    """The jaffle_shop-shaped project for ``flavour`` (``ours`` or ``duckdb``) at ``root``."""
    write_common(root, "jaffle", profile)
    _seeds(root / "seeds")
    for relative, text in JAFFLE_MODELS.items():
        path = root / "models" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if relative == "order_events.sql":
            text = text.format(incremental=incremental_config(flavour, "order_id"))
        path.write_text(text)
    (root / "models" / "schema.yml").write_text(JAFFLE_SCHEMA)
    return root


def generated(root: Path, flavour: str, profile: str, models: int = 100, tests: int = 300) -> Path:
    """A generated project of ``models`` models in four layers and ``tests`` data tests over them."""
    write_common(root, "generated", profile)
    _seeds(root / "seeds")
    rng = random.Random(models * 1000 + tests)
    layers = [models * 3 // 10, models * 3 // 10, models * 2 // 10]
    layers.append(models - sum(layers))
    kinds = ("view", "table", "table", "incremental")
    folder = root / "models" / "gen"
    folder.mkdir(parents=True, exist_ok=True)
    previous = ["raw_orders"]
    names: list[tuple[str, str]] = []
    for layer, (count, kind) in enumerate(zip(layers, kinds, strict=True)):
        current = []
        for index in range(count):
            name = f"l{layer}_m{index:03d}"
            upstream = rng.choice(previous)
            body = _generated_model(name, kind, flavour, upstream, rng.choice(previous), rng)
            (folder / f"{name}.sql").write_text(body)
            current.append(name)
            names.append((name, upstream))
        previous = current
    (folder / "schema.yml").write_text(_generated_schema(names, tests, rng))
    return root


def _generated_model(
    name: str, kind: str, flavour: str, upstream: str, other: str, rng: random.Random
) -> str:
    """One generated model: columns ``order_id`` (unique), ``customer_id``, ``order_date``,
    ``status`` and a derived number, read from ``upstream`` (joined to ``other`` now and then)."""
    if kind == "incremental":
        config = incremental_config(flavour, "order_id")
    else:
        config = f"{{{{ config(materialized='{kind}') }}}}\n"
    if upstream == "raw_orders":
        source = "select id as order_id, user_id as customer_id, order_date, status, 1 as n"
        source += " from {{ ref('raw_orders') }}"
    else:
        source = f"select * from {{{{ ref('{upstream}') }}}}"
    join = rng.random() < 0.3 and other != upstream
    body = (
        f"{config}with up as ({source})\n"
        "select up.order_id, up.customer_id, up.order_date, up.status,"
        f" up.n + {rng.randint(1, 9)} as n\n"
        "from up\n"
    )
    if join:
        body += f"left join (select order_id as o from {{{{ ref('{other}') }}}}) other"
        body += " on up.order_id = other.o\n"
    if kind == "incremental":
        body += "{% if is_incremental() %}where up.order_date > "
        body += "(select max(order_date) from {{ this }}){% endif %}\n"
    return body


def _generated_schema(names: list[tuple[str, str]], tests: int, rng: random.Random) -> str:
    """``tests`` data tests spread over the models, round-robin, of dbt's four generic kinds."""
    per_model: dict[str, list[str]] = {name: [] for name, _ in names}
    plans = []
    for index in range(tests):
        name, upstream = names[index % len(names)]
        plans.append((name, upstream, index // len(names)))
    for name, upstream, round_ in plans:
        per_model[name].append(_generated_test(round_, upstream))
    lines = ["version: 2", "models:"]
    for name, entries in per_model.items():
        if not entries:
            continue
        lines += [f"  - name: {name}", "    columns:"]
        by_column: dict[str, list[str]] = {}
        for column, test in entries:
            by_column.setdefault(column, []).append(test)
        for column, column_tests in by_column.items():
            lines += [f"      - name: {column}", "        data_tests:"]
            lines += [f"          - {test}" for test in column_tests]
    return "\n".join(lines) + "\n"


def _generated_test(round_: int, upstream: str) -> tuple[str, str]:
    """The ``round_``-th test of a model: its column and the test's YAML."""
    statuses = ", ".join(STATUSES)
    target = "raw_orders" if upstream == "raw_orders" else upstream
    field = "id" if upstream == "raw_orders" else "order_id"
    kinds = [
        ("order_id", "unique"),
        ("order_id", "not_null"),
        ("status", f"accepted_values: {{arguments: {{values: [{statuses}]}}}}"),
        ("order_id", f"relationships: {{arguments: {{to: ref('{target}'), field: {field}}}}}"),
        ("customer_id", "not_null"),
        ("order_date", "not_null"),
    ]
    column, test = kinds[round_ % len(kinds)]
    return column, test
