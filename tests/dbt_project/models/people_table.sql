{{ config(materialized='table') }}
select id, name, region from {{ ref('people') }}
