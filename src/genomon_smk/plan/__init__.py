"""Planning: the config, sheets, reference and regions checked before any job; the storage and stage plans; run bookkeeping (lock, tier monitor); the cohort planner."""
