package natsbridge_test

const roleEnv = "HERALD_NATSBRIDGE_ROLE"

func runRole(role string) int { return 2 }
