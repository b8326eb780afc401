{#-
  dbt's contract for this macro is a list of Column objects (its snapshot helpers read each
  one's `.name`); dbt-spark's returns the raw `describe extended` table, which breaks
  `hard_deletes: new_record` snapshots (deletion records lose their columns). The adapter
  method parses the same `describe extended`.
-#}
{% macro deltamerge__get_columns_in_relation(relation) -%}
  {{ return(adapter.get_columns_in_relation(relation)) }}
{%- endmacro %}
