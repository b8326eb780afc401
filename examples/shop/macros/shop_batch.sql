{#- The batch of raw rows a run loads: `SHOP_BATCH` (1 when unset), read as the model runs.
    dbt records the environment variables a model reads while it parses the project, and parses
    that model again whenever one of them changes; the demo changes this one between commands
    (unset, then 2, then unset). Read only at execution (`execute` is false while dbt parses),
    the change costs no parse. -#}
{% macro shop_batch() %}
  {{ return(env_var('SHOP_BATCH', '1') if execute else '1') }}
{% endmacro %}
