"""What crosses the bridge between the JVM and Python: the typed messages (and their JSON
shapes) both sides read and write."""
