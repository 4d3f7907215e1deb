"""The copy of the providers every search reads (``world``), one per process
(``replica``): below the features, which keep their own values of its trees."""
