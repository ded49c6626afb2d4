"""What arrives when: arrival processes, trace replay, the prefix cache, the planned workload."""
