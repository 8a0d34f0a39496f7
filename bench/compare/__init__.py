"""`make compare`: the same MXJob files through mxjob and Kubeflow training-operator, side by
side on the KWOK tier (docs/comparison.md). `__main__` runs it; `scenarios` holds the jobs and
the steps, `observe` the API watches, `play` one scenario's outcome, `large` the 1000-replica
job, `controllers` the two installs, `report` the tables."""
