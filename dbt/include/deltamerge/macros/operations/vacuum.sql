{#- VACUUM: `dbt run-operation vacuum --args '{relation: "analytics.orders", retain_hours: 168}'`
    Deletes files no retained version references (and leftovers of writes that never
    committed); `dry_run: true` only lists them. -#}
{% macro vacuum(relation, retain_hours=168, dry_run=false, enforce_retention=true) %}
  {%- set result = adapter.delta_vacuum(relation, retain_hours, dry_run, enforce_retention) -%}
  {{ log(("Would delete " if result["dry_run"] else "Deleted ") ~ result["num_files"] ~ " files ("
         ~ result["bytes"] ~ " bytes) of " ~ result["table_path"] ~ "; versions from "
         ~ result["oldest_retained_version"] ~ " stay readable", info=True) }}
  {{ return(result) }}
{% endmacro %}
