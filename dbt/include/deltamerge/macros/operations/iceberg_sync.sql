{#- The Iceberg side of a UniForm table (`table_format: iceberg`) brought to its latest Delta version:
    `dbt run-operation iceberg_sync --args '{relation: "analytics.orders"}'`. Every commit does this
    itself; run it after one whose conversion failed (the run said so). -#}
{% macro iceberg_sync(relation) %}
  {%- set result = adapter.delta_iceberg_sync(relation) -%}
  {{ log("Iceberg metadata of " ~ result["table_path"] ~ " shows Delta version " ~ result["delta_version"]
         ~ ": " ~ result["metadata_location"], info=True) }}
  {{ return(result) }}
{% endmacro %}
