# Every variable feature OpenTofu 1.12 accepts.

variable "plain" {}

variable "name" {
  type        = string
  description = "The name of everything."
  default     = "demo"
}

variable "settings" {
  type = object({
    size    = optional(number, 3)
    zones   = optional(list(string), ["a", "b"])
    labels  = optional(map(string))
    enabled = bool
    nested = optional(object({
      depth = optional(number, 1)
      tags  = optional(set(string), [])
    }), {})
  })
  default = {
    enabled = true
  }
  description = <<-EOT
    Settings, with optional attributes
    and their defaults.
  EOT
}

variable "rules" {
  type = list(object({
    port     = number
    protocol = optional(string, "tcp")
  }))
  default = [{ port = 80 }, { port = 443, protocol = "udp" }]
}

variable "password" {
  type      = string
  sensitive = true
  nullable  = false
  validation {
    condition     = length(var.password) >= 12
    error_message = "The password must have at least 12 characters."
  }
  validation {
    condition     = can(regex("[0-9]", var.password))
    error_message = "The password must contain a digit, not ${length(var.password)} letters."
  }
}

variable "token" {
  type      = string
  ephemeral = true
  default   = null
}

variable "legacy_region" {
  type       = string
  default    = "eu-west-1"
  deprecated = "Use var.settings instead."
}

variable "anything" {
  type    = any
  default = { a = [1, 2], b = "x" }
}

variable "keyword_list" {
  type    = list
  default = ["x"]
}

variable "pair" {
  type    = tuple([string, number, bool])
  default = ["a", 1, true]
}

variable "counts" {
  type     = map(number)
  default  = { a = 1 }
  nullable = true
}

variable "nothing" {
  type    = string
  default = null
}

variable "environment" {
  type    = string
  default = "prod"
  const   = true
}
