module example.com/terraform-provider-demo

go 1.22

require (
	github.com/google/uuid v1.6.0
	golang.org/x/text v0.3.7
)

replace github.com/google/uuid => github.com/google/uuid v1.5.0
