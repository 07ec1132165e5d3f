"""The timing model: the kernel's recorded operations replayed on the timed engine, each priced.

* :mod:`.streams` / :mod:`.recordings` -- the recorded operation streams (live, or shipped and stamped) and the roles
  read from them
* :mod:`.costs` / :mod:`.kernel_costs` / :mod:`.backend` -- what each operation costs (from the hardware description
  and the compiled kernel's instruction mix) and the backend that prices them on the engine
* :mod:`.model` -- one launch predicted; :mod:`.band` -- its band; :mod:`.table` -- the series' tables
  (:func:`~gluon_overlap.timing.table.model_table`)
* :mod:`.calibration` / :mod:`.fit` -- the parameters no first principle pins, solved from published measurements
* :mod:`.run_cache` -- simulated runs kept on disk between processes
"""
