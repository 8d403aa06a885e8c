// Command vulnsprobe is the Go program the differential test of
// convert/vulns builds and scans: it links golang.org/x/text v0.3.7 and a
// golang.org/x/net of November 2021, both with published vulnerabilities.
package main

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/text/language"
)

func main() {
	tags, _, err := language.ParseAcceptLanguage("en-GB,en;q=0.8")
	fmt.Println(tags, err)
	doc, err := html.Parse(strings.NewReader("<p>probe</p>"))
	fmt.Println(doc != nil, err)
	os.Exit(0)
}
