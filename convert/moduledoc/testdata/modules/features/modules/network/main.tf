variable "cidr" {
  type        = string
  description = "The network's address range."
  validation {
    condition     = can(cidrhost(var.cidr, 0))
    error_message = "Must be a CIDR range."
  }
}

resource "terraform_data" "network" {
  input = var.cidr
}

output "cidr" {
  value       = var.cidr
  description = "The range, as given."
}
