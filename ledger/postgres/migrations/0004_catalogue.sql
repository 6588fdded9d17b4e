-- Schema version 4: the catalogue's records (ledger.CatalogueStore), in
-- one table of (kind, key) → value, the same records every backend keeps
-- (ledger/internal/core, catalogue.go): kind is the record's kind, key the
-- tuple it is filed under (an order-preserving byte encoding, so that a
-- range of keys is a prefix scan), value its encoding. Every call runs in
-- one SERIALIZABLE transaction, so two controllers admitting the same
-- generation, or reserving the same key, cannot both commit.

CREATE TABLE IF NOT EXISTS __SCHEMA__.catalogue (
	kind  smallint NOT NULL,
	key   bytea    NOT NULL,
	value bytea    NOT NULL,
	PRIMARY KEY (kind, key)
);
