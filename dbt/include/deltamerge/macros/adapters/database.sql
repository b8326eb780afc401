{#-
  dbt's own rule for a model's database, where dbt-spark's always says none (Spark's catalog has
  two-part names): a model's `database` config, else the profile's `database` (or `catalog`),
  names the Iceberg REST catalog the model's table is registered in (relation.py); none without.
-#}
{% macro deltamerge__generate_database_name(custom_database_name=none, node=none) -%}
  {% do return(custom_database_name or target.database or none) %}
{%- endmacro %}
