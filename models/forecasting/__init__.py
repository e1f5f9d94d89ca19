"""Forecasting members and their choice.

- `seqlab.models.forecasting.classical`: statsforecast's automatic ETS, ARIMA and Theta and
  seasonal naive, fitted by the library and forecast by seqlab's own recursions (parameters
  fixed, state rolled forward), eagerly or inside a SavedModel.
- `seqlab.models.forecasting.selection`: rolling-origin backtest folds, and the choice among
  the members and the means of the best k by backtest error.
- `seqlab.models.forecasting.metrics`: accuracy as the forecasting competitions define it
  (sMAPE, MASE, MAPE, RMSE, OWA against M4's Naive2) per series and over a set (NumPy only).

The neural members are `seqlab.models.Forecaster` and `AutoForecaster`.
"""
