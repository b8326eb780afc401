"""Where Spark runs: the embedded session, Spark Connect, the local server, the metastore, Spark's logs."""
