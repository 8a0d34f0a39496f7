"""The old API versions (docs/api.md#versions): the conversion webhook's review, the mapping of
kubeflow.org/v1alpha1 and v1alpha2 to and from v1, the stash of what a version cannot hold, and
the v1 schema a stash is checked against."""
