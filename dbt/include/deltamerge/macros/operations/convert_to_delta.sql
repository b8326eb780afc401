{#- CONVERT TO DELTA: `dbt run-operation convert_to_delta --args '{path: ..., partition_by: "day DATE"}'`
    or `--args '{relation: "schema.table"}'`. The adapter does the work; this only reports it. -#}
{% macro convert_to_delta(path=none, relation=none, partition_by=none, statistics=true, relation_name=none) %}
  {%- set result = adapter.delta_convert(path, relation, partition_by, statistics, relation_name) -%}
  {{ log(result["message"] ~ " (Delta table at " ~ result["table_path"] ~ ")", info=True) }}
  {{ return(result) }}
{% endmacro %}
