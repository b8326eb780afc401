{#- Delta tables are written by the engine (adapter.delta_materialize); parquet stays dbt-spark's. -#}
{% materialization table, adapter='deltamerge' %}
  {%- set file_format = config.get('file_format', 'delta') -%}
  {%- set existing_relation = load_cached_relation(this) -%}
  {%- set target_relation = this.incorporate(type='table', is_delta=(file_format == 'delta')) -%}

  {{ run_hooks(pre_hooks) }}

  {%- if existing_relation is not none and not (file_format == 'delta' and existing_relation.is_delta) -%}
    {% do adapter.drop_relation(existing_relation) %}
  {%- endif -%}
  {%- if file_format == 'delta' -%}
    {% set response = adapter.delta_materialize(target_relation, compiled_code, model.config, 'table') %}
    {% do store_result('main', response=response) %}
  {%- else -%}
    {% call statement('main') -%}
      {{ create_table_as(False, target_relation, compiled_code) }}
    {%- endcall %}
  {%- endif -%}

  {{ return(deltamerge_finish(target_relation, existing_relation, True)) }}
{% endmaterialization %}
