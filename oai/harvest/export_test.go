package harvest

// SetBatch is setBatch for the tests of package harvest_test.
var SetBatch = setBatch
