# Security hardening checks; see docs/security.md.
#
# The local API's request-decoding fuzz run (api-fuzz, part of make test) is
# in mk/fuzz.mk with the project's other fuzz targets.
