"""The pod builder (docs/environment.md): a job's desired Pods, the DMLC_* / MX_CONFIG
environment that wires them together, their headless Services and the job's ConfigMaps."""
