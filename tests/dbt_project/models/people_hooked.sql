{{ config(
    materialized='table',
    pre_hook="LOCK TABLE {{ ref('people') }} SHARED",
    post_hook="UNLOCK TABLE {{ ref('people') }}",
) }}
-- The pre-hook / post-hook pattern: the seed stays SHARED-locked across the model's statements.
-- With the var fail_hooked the model fails after its pre-hook, so its post-hook never runs.
select id, name from {{ ref('people') }}
{% if var('fail_hooked', false) %}
where no_such_column = 1
{% endif %}
