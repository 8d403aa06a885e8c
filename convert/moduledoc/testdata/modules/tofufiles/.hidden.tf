variable "hidden" {}
