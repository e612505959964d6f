-- Fails (returns rows) if an insert_overwrite run lost or duplicated a partition's rows.
select s.region, s.n, m.n
from (select region, count(*) as n from {{ ref('people') }} group by region) s
full outer join (select region, count(*) as n from {{ ref('people_by_region') }} group by region) m
  on s.region = m.region
where s.n is null or m.n is null or s.n != m.n
