"""The rules: what a statement locks. The facts the JVM extracts from a plan (``facts``), the
command table and lists (``commands``, ``command_classes``, generated into the docs by
``command_docs``), the policy turning facts into lock requests (``policy``), and what lock data
says of a statement (``query_text``). No backend, no Spark."""
