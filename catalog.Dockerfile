# File-based catalog image for kraan-operator, served by opm.
# Build: `make catalog catalog-build CATALOG_IMG=...` (needs a container engine).
FROM quay.io/operator-framework/opm:v1.73.0

ENTRYPOINT ["/bin/opm"]
CMD ["serve", "/configs", "--cache-dir=/tmp/cache"]

COPY catalog /configs
RUN ["/bin/opm", "serve", "/configs", "--cache-dir=/tmp/cache", "--cache-only"]

# The label tells OLM where the declarative config is.
LABEL operators.operatorframework.io.index.configs.v1=/configs
