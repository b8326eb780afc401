{% materialization seed, adapter='deltamerge' %}
  {#- Every config key is read first: a wrong value fails the model before anything runs. -#}
  {%- set file_format = adapter.delta_file_format(this, model.config, 'seed') -%}
  {%- set existing_relation = load_cached_relation(this) -%}
  {%- set target_relation = this.incorporate(type='table', is_delta=(file_format == 'delta')) -%}
  {%- set agate_table = load_agate_table() -%}
  {%- do store_result('agate_table', response='OK', agate_table=agate_table) -%}

  {{ run_hooks(pre_hooks) }}

  {%- if existing_relation is not none and not (file_format == 'delta' and existing_relation.is_delta) -%}
    {% do adapter.drop_relation(existing_relation) %}
  {%- endif -%}
  {%- if file_format == 'delta' -%}
    {% set response = adapter.delta_seed(target_relation, agate_table, model.config) %}
    {% do store_result('main', response=response) %}
  {%- else -%}
    {% set sql = create_csv_table(model, agate_table) %}
    {% do load_csv_rows(model, agate_table) %}
    {% call noop_statement('main', 'INSERT ' ~ (agate_table.rows | length), 'INSERT', agate_table.rows | length) %}
      {{ get_csv_sql(sql, '') }}
    {% endcall %}
  {%- endif -%}

  {{ return(deltamerge_finish(target_relation, existing_relation, True)) }}
{% endmaterialization %}
