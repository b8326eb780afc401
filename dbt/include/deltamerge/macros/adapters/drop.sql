{#-
  dbt-spark's drop, and for a Delta table the files table its catalog entry may stand on: a
  table whose files carry deletion vectors is bound as a view over `<name>__deltamerge_files`
  (binding_view.py), which would otherwise stay behind. `drop table` drops a view too. A table
  registered in an Iceberg REST catalog (a model's `database`) is dropped there first (no purge).
-#}
{% macro deltamerge__drop_relation(relation) -%}
  {%- if relation.is_delta -%}{% do adapter.delta_unregister(relation) %}{%- endif -%}
  {{ spark__drop_relation(relation) }}
  {%- if relation.is_delta -%}
    {% call statement('drop_relation_files', auto_begin=False) -%}
      drop table if exists {{ relation.incorporate(path={"identifier": relation.identifier ~ "__deltamerge_files"}) }}
    {%- endcall %}
  {%- endif -%}
{% endmacro %}
