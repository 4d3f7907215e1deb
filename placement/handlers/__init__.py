"""HTTP views, one module per noun: parse and validate, call the data layer, serialize."""
