{#-
  dbt-spark's snapshot, on Delta tables by default. The first run writes the snapshot table
  through the engine (adapter.delta_materialize); later runs are dbt's own statements (a
  staging view, ALTER TABLE ... ADD COLUMNS, MERGE INTO), which the cursor runs as Delta
  commits. dbt-spark's materialization hard-codes `parquet` as the default format and refuses
  it, hence this override.
-#}
{% materialization snapshot, adapter='deltamerge' %}
  {%- set target_table = model.get('alias', model.get('name')) -%}
  {%- set strategy_name = config.get('strategy') -%}
  {%- set file_format = adapter.delta_file_format(this, model.config, 'table') -%}

  {#- A snapshot run killed while re-binding its table left no catalog entry: bind it again, or
      this run would start the snapshot over. -#}
  {% do adapter.delta_recover_binding(this.incorporate(type='table')) %}
  {% set target_relation_exists, target_relation = get_or_create_relation(
          database=none, schema=model.schema, identifier=target_table, type='table') -%}

  {%- if file_format != 'delta' -%}
    {% do exceptions.raise_compiler_error(
        "Snapshot '" ~ model.name ~ "': file_format '" ~ file_format ~ "' cannot hold a snapshot; "
        ~ "dbt-deltamerge snapshots are Delta tables (remove file_format or set it to 'delta')") %}
  {%- endif -%}
  {%- if target_relation_exists and not target_relation.is_delta -%}
    {% do exceptions.raise_compiler_error(
        "Snapshot '" ~ model.name ~ "': the existing table " ~ target_relation
        ~ " is not a Delta table; drop it, or convert it with `dbt run-operation convert_to_delta`") %}
  {%- endif -%}
  {%- if not target_relation.is_table -%}
    {% do exceptions.relation_wrong_type(target_relation, 'table') %}
  {%- endif -%}
  {% if not adapter.check_schema_exists(model.database, model.schema) %}
    {% do create_schema(model.schema) %}
  {% endif %}

  {{ run_hooks(pre_hooks, inside_transaction=False) }}
  {{ run_hooks(pre_hooks, inside_transaction=True) }}

  {% set strategy_macro = strategy_dispatch(strategy_name) %}
  {% set strategy = strategy_macro(model, "snapshotted_data", "source_data", model['config'], target_relation_exists) %}

  {% if not target_relation_exists %}
    {% set build_sql = build_snapshot_table(strategy, model['compiled_code']) %}
    {% set response = adapter.delta_materialize(target_relation.incorporate(is_delta=true), build_sql, model.config,
        {'materialization': 'table'}) %}
    {% do store_result('main', response=response) %}
  {% else %}
    {% set columns = config.get("snapshot_table_column_names") or get_snapshot_table_column_names() %}
    {{ adapter.valid_snapshot_target(target_relation, columns) }}
    {% set staging_table = spark_build_snapshot_staging_table(strategy, sql, target_relation) %}
    {% set internal = ['dbt_change_type', 'DBT_CHANGE_TYPE', 'dbt_unique_key', 'DBT_UNIQUE_KEY'] %}
    {% if config.get('unique_key') | is_list %}
      {% for key in strategy.unique_key %}
        {% do internal.extend(['dbt_unique_key_' ~ loop.index, 'DBT_UNIQUE_KEY_' ~ loop.index]) %}
      {% endfor %}
    {% endif %}
    {% set missing_columns = adapter.get_missing_columns(staging_table, target_relation)
                             | rejectattr('name', 'in', internal) | list %}
    {% do create_columns(target_relation, missing_columns) %}
    {% set source_columns = adapter.get_columns_in_relation(staging_table)
                            | rejectattr('name', 'in', internal) | list %}
    {% set quoted_source_columns = [] %}
    {% for column in source_columns %}
      {% do quoted_source_columns.append(adapter.quote(column.name)) %}
    {% endfor %}
    {% call statement('main') %}
      {{ snapshot_merge_sql(target=target_relation, source=staging_table, insert_cols=quoted_source_columns) }}
    {% endcall %}
  {% endif %}

  {% do apply_grants(target_relation, config.get('grants'), should_revoke(target_relation_exists, full_refresh_mode)) %}
  {% do persist_docs(target_relation, model) %}
  {{ run_hooks(post_hooks, inside_transaction=True) }}
  {{ adapter.commit() }}
  {% if staging_table is defined %}
    {% do post_snapshot(staging_table) %}
  {% endif %}
  {{ run_hooks(post_hooks, inside_transaction=False) }}
  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
