{#- OPTIMIZE: `dbt run-operation optimize --args '{relation: "analytics.orders", where: "day >= ''2026-01-01''", zorder_by: [customer_id, ts]}'`
    Bin-packs the small files (of the partitions `where` keeps) into files of
    `delta.targetFileSize` (1 GiB by default), or, with `zorder_by`, rewrites each partition
    Z-ordered by those columns: one OPTIMIZE commit, rows unchanged. `dry_run: true` only says
    which files would be rewritten into how many. -#}
{% macro optimize(relation, where=none, zorder_by=none, dry_run=false) %}
  {%- set result = adapter.delta_optimize(relation, where, zorder_by, dry_run) -%}
  {%- if result["dry_run"] -%}
    {{ log("OPTIMIZE of " ~ result["table_path"] ~ " would rewrite " ~ result["files_in"] ~ " files ("
           ~ result["bytes"] ~ " bytes) in " ~ (result["bins"] | length) ~ " bins as " ~ result["files_out"] ~ " files", info=True) }}
  {%- else -%}
    {%- set m = result["metrics"] -%}
    {{ log("OPTIMIZE of " ~ result["table_path"] ~ ": " ~ m["numRemovedFiles"] ~ " files rewritten as "
           ~ m["numAddedFiles"] ~ " (version " ~ result["version"] ~ ")", info=True) }}
  {%- endif -%}
  {{ return(result) }}
{% endmacro %}
