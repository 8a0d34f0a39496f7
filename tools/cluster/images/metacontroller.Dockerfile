# Metacontroller v4.17.2 built from source on this machine, at the path its own manifests use.
ARG BASE
FROM ${BASE}
COPY metacontroller /usr/bin/metacontroller
USER 65532:65532
ENTRYPOINT ["/usr/bin/metacontroller"]
