"""Operating the bot: Prometheus metrics (`metrics`, served by `exposition`), OpenTelemetry
traces (`tracing`) and JSON log lines (`logs`).

The rest of the code calls one-line hooks from here at the points it observes; every series,
span and log field is defined in this package.
"""
