"""The copy of the providers every search reads (``world``), one per process
(``replica``), with each tree's form (``forms``): below the features, which keep
their own values of its trees."""
