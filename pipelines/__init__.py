"""One module per task: config, model building, train / evaluate / predict / export."""
