"""The clean-room Genomon tools (GenomonFisher, GenomonMutationFilter, EBFilter, mutation_util) and their shared pileup and statistics code."""
