# Override files merged over primary files, as OpenTofu merges them.

variable "size" {
  type        = number
  default     = 1
  description = "Replaced by override.tf."
}

variable "kept" {
  type = string
}

output "size" {
  value = var.size
}

module "child" {
  source  = "hashicorp/child/aws"
  version = "1.0.0"
}
