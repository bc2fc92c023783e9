package publish

// KeptCompanion is keptCompanion, for the external tests.
var KeptCompanion = keptCompanion
