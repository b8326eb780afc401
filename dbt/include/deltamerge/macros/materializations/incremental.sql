{#- Our own materialization: dbt-spark's rejects strategies it does not know. Strategy
    choice and config validation happen in the adapter (WriteSpec), not here. -#}
{% materialization incremental, adapter='deltamerge', supported_languages=['sql', 'python'] %}
  {%- set file_format = config.get('file_format', 'delta') -%}
  {%- set existing_relation = load_cached_relation(this) -%}
  {%- set target_relation = this.incorporate(type='table', is_delta=(file_format == 'delta')) -%}
  {%- set full_refresh = should_full_refresh() -%}
  {%- set batch = model.get('batch') -%}

  {{ run_hooks(pre_hooks) }}

  {%- if existing_relation is not none and (not existing_relation.is_delta or file_format != 'delta') -%}
    {% do adapter.drop_relation(existing_relation) %}
    {%- set existing_relation = none -%}
  {%- endif -%}
  {%- if file_format == 'delta' -%}
    {% set response = adapter.delta_materialize(
        target_relation, compiled_code, model.config, 'incremental', full_refresh,
        batch.event_time_start if batch else none, batch.event_time_end if batch else none,
        language=model.language) %}
    {% do store_result('main', response=response) %}
  {%- else -%}
    {{ exceptions.raise_compiler_error(
        "Model '" ~ model.name ~ "': incremental models need file_format='delta' with dbt-deltamerge "
        ~ "(got '" ~ file_format ~ "'); remove file_format or set it to 'delta'.") }}
  {%- endif -%}

  {{ return(deltamerge_finish(target_relation, existing_relation, full_refresh)) }}
{% endmaterialization %}
