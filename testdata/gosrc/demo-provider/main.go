package main

import (
	"fmt"

	"github.com/google/uuid"
	"golang.org/x/text/width"
)

func main() {
	fmt.Println(uuid.NameSpaceDNS.String(), width.Narrow.String("ｘ"))
}
