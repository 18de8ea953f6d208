"""The study machinery: the study kinds, their tasks, the one driver, summaries and reports
(parameter and model recovery, SBC, power and the metric-level studies)."""
