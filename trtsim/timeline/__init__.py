"""Virtual time: per-rank clocks advanced by modelled work and settled by each call (pure
rules, priced by a ClockModel the composer gives), and Perfetto trace files."""
