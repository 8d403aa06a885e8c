module example.com/vulnsprobe

go 1.22

require (
	golang.org/x/net v0.0.0-20211112202133-69e39bad7dc2
	golang.org/x/text v0.3.7
)
