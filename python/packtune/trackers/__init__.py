"""Exporting a run to the trackers people look at runs in: MLflow and TensorBoard, through
their own Python writers. ``packtune export DIR --mlflow/--tensorboard`` runs
``python -m packtune.trackers``."""
